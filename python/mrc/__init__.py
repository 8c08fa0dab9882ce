"""mrc: multi-ring collective communication from Python."""
