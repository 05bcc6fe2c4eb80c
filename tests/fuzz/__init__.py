"""Support for the schemathesis API fuzz (``tests/test_api_fuzz.py``)."""
