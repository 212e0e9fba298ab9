"""Pages about people and teams: signing in and up, teams and members, invitations, tokens."""
