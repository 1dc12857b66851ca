\set a 5
\set b :a * 2 + 0.5
\set n NULL
\set t true
\set r random(1, 1000000)
\set h hash(:a)
\set p permute(3, 10)
-- a comment; not a command

SELECT 'a;b' AS x, E'c\';d' AS "e;f" /* g; /* h; */ i; */
  -- j;
  , $q$k;$q$ AS k, (SELECT ';') AS l, :a::int AS a, :b AS b;
SELECT :a AS one \; SELECT :b::text AS two
\gset
\if :two > 10
SELECT :n IS NULL AS isnull, :t AS t, :r AS r, :h AS h, :p AS p, :two AS two \gset g_
\else
SELECT 'wrong';
\endif
\setshell s echo 12
\sleep 1 ms
SELECT :s AS s, :scale AS scale, :client_id AS c, :random_seed AS rs, :g_r AS gr
