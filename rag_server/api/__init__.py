"""gRPC servicers (one per service), the call plumbing (calls.py) and error mapping."""
