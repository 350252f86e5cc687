"""Judge-plus-human studies: an LLM judge scores every output, humans a subset; PPI combines them."""
