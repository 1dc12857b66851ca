SELECT 1;
\set x 1 + * 2
