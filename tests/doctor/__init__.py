"""Tests of git_harn/doctor/."""
