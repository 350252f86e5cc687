"""Core vocabulary: errors, random-stream seeds, annotation designs and judgement tables (imports nothing else of simdesign)."""
