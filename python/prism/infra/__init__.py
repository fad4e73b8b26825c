"""What every pass and library uses: errors, IR helpers, attribute names, the pass base and the pipeline."""
