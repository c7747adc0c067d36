"""Judging a scenario: its checks against the baseline, the measure-until-decisive loops (static and A/B)."""
