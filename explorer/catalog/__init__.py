"""Many packets under one root: discovery, the app's packet index, worker processes and triage; no UI."""
