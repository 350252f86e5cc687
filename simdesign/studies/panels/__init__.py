"""Panel studies: how well k crowd workers agree with an expert panel, by aggregation method."""
