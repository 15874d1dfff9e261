"""Peer workloads for the Plait benchmark harness (LangGraph, Microsoft Agent Framework).

Each ``peer_*`` module exposes ``NAME``, ``VERSION`` and ``WORKLOADS`` (see
:mod:`tests.benchmarks.peers.compare` for the interface); ``compare.py`` runs them side by
side with Plait's own workloads.
"""
