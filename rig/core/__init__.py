"""The foundations every other package uses: errors, units, YAML input, processes, progress."""
