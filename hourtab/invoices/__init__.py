"""Invoices: a closed month's statement issued as a numbered invoice PDF (no payment is taken)."""
