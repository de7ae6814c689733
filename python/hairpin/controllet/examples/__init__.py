"""Example controllets (run by hairpind as ``python -m hairpin.controllet.examples.NAME``) and a
remote controller that listens to what controllets publish."""
