// Command flotilla is Flotilla's CLI, and with `flotilla manager` its controllers.
package main
