"""Reports: the files and the terminal summary a run produces."""
