"""Layer cli: the `icebench` command, one module per command (harness/cli/commands/), and every
line a user reads. It reads and checks every flag before it loads an engine, a catalog or a plot."""
