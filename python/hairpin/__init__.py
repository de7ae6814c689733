"""Hairpin's controller-side Python: os-ken apps and the harnesses that test the switch."""
