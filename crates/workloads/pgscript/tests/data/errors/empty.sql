  -- nothing

