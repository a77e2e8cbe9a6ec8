//! Layering TOML tables: a preset or default under the user's keys.

/// Recursive TOML merge: tables merge key by key, anything else replaces. A table that selects a
/// different variant of a tagged enum (its `name` or `kind` differs) replaces the preset's table
/// instead of merging into it, so the old variant's fields do not leak into the new one.
pub fn merge_toml(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o))
                if ["name", "kind"]
                    .iter()
                    .all(|tag| o.get(*tag).is_none() || o.get(*tag) == b.get(*tag)) =>
            {
                merge_toml(b, o)
            }
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}
