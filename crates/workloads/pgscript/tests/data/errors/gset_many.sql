SELECT 1 \gset a b
