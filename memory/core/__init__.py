"""Memory's shared vocabulary: the seam's messages, stored records, settings, the clock, tokens
and word lists."""
