"""Django base pieces every app uses: TimeStampedModel, ApplicationError, team scoping."""
