"""``ember._dynamo.exc``: ``ember.compile``'s exceptions, by PyTorch's names."""
from ember.dispatcher.lazy import InvalidBackend, TorchDynamoException, Unsupported

__all__ = ["TorchDynamoException", "Unsupported", "InvalidBackend"]
