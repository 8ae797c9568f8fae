"""The proposals mount: decided proposals, receipts, curated links."""
