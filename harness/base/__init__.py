"""Layer base: errors, settings, the results store, caps, signals: what every layer above uses."""
