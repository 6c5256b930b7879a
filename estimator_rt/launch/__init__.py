"""Launchers' shared parts: role layout, exit-code policy, supervision.

Nothing in this package imports TensorFlow: launchers start and watch the
binary, they do not run it.
"""
