"""What a crow or requester may do: the trust ledger, approvals and verdicts, strikes."""
