"""``tm_proposals expire``: expiry and the expired proposals' retention, on demand."""
