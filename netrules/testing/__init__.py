"""Test support shipped with the package: an independent oracle of meaning (``oracle``)."""
