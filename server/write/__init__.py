"""The write path: plan, check, lock, commit, recover, journal."""
