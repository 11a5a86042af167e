"""Folding history into the summary: the summarizer, its guards, the fold ladder, the
strategies and the scheduler."""
