import { startHostProcess } from "./host-process.js";

// The process entry (`npm start`, the container): the host with the built-in handlers only.
startHostProcess();
