"""Scoring an ensemble: the metrics a record holds (`metrics`) and the diagnostics of its
members (`diagnostics`: the Bregman decomposition, PAC-Bayes majority-vote bounds, calibration)."""
