"""formulary-rag: grounded, cited answers from the Vietnamese National Drug Formulary over gRPC."""

__version__ = "0.1.0"
