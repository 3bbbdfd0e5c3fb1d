"""E-mail alerts for a retainer's client: subscriptions (double opt-in), what was sent, and when."""
