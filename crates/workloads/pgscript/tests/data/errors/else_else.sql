\if 1
SELECT 1;
\else
SELECT 2;
\else
SELECT 3;
\endif
