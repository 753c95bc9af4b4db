"""What runs leave behind, for their readers: artifacts (files, pull requests, transcripts) with
signed download URLs, and the run's timeline."""
