"""gRPC servicers (one per service), interceptors and error mapping."""
