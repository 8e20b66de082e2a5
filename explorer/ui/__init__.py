"""The app's shell around the views: packet list, modes, URL query and export wiring; no numbers."""
