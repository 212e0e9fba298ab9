"""Accounts: users, teams (the tenant), memberships, invitations, API tokens."""
