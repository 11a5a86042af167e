"""Recall: one retrieval module for the visitor's past and the shop's knowledge, the words a turn is heard with."""
