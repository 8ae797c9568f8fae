"""The Django pages of the site the http mount reads."""
