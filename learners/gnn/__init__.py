"""GNN learners (torch, in the gnn extra); torch is imported lazily."""
