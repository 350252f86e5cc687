"""Core vocabulary: errors, random-stream seeds, annotation designs, judgement tables and the protocol every result follows (imports nothing else of simdesign)."""
