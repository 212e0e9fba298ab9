"""Context compaction (DESIGN 2.6): the token estimate, the threshold and the summarizer."""
