"""One module per rescheduler plugin; ``registry`` maps the names policies use to their classes."""
