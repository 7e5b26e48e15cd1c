/**
 * `make` with its answer kept per object it is given, for as long as that object lives (a WeakMap): the
 * streams of one task share their update objects, so each update is encoded once for all of them. A value
 * that is not an object is made each time.
 */
export function oncePerObject<T, R>(make: (value: T) => R): (value: T) => R {
  const made = new WeakMap<object, R>();
  return (value) => {
    if (typeof value !== "object" || value === null) return make(value);
    let result = made.get(value);
    if (result === undefined) made.set(value, (result = make(value)));
    return result;
  };
}
