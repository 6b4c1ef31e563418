"""Layer services: stacks, servers by PID, worker launchers and their caps, the start-up sweep."""
