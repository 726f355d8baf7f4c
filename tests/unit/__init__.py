"""Unit tests, one file per module; a package so a file may share its name with another test (e2e/test_approvals)."""
