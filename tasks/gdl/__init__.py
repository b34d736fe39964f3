"""GDL: KIF parser, semantics checks, clingo grounding, the compiled engine, random playouts."""
