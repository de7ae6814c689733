"""os-ken applications shipped with Hairpin."""
