"""Unit tests of the tool layer: real temporary directories, real links, no mocks."""
