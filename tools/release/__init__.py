"""What users get: release (version and tags), standalone (nbval on the installed wheel), float_nudge."""
