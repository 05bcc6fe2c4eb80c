"""Authentication of hub callers (API keys) and the authorisation dependencies of every route."""
