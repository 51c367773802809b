"""Simulated controllers (KWOK-style) that tick() runs against each cluster."""
